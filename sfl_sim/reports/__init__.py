"""Reports of the simulator's parts without training: the cell (``sfl-sim channel``) and traces."""
