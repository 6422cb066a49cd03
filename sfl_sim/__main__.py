"""``python -m sfl_sim ARGS`` is the ``sfl-sim ARGS`` command."""
import sys

from sfl_sim.cli import main

sys.exit(main())
