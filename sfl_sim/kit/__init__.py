"""Generic plumbing shared by ``channel`` and ``sfl_sim``: component registries, value checks,
protocol checks and ranges.

Each module has one job and is imported by its own path (this package re-exports nothing):

- :mod:`sfl_sim.kit.registry`: name -> class registries with ``package.module:Class`` ids, entry
  points and constructor-parameter checks;
- :mod:`sfl_sim.kit.checks`: the ``NAME: got VALUE; allowed: WHAT`` value checks, and an exception's
  message on one line (:func:`~sfl_sim.kit.checks.one_line`);
- :mod:`sfl_sim.kit.protocols`: does an object offer every member of a :class:`typing.Protocol`;
- :mod:`sfl_sim.kit.ranges`: an interval of meaningful values with the reason for its bounds;
- :mod:`sfl_sim.kit.params`: each component's parameter model (declared or derived from its
  constructor's signature), which the registries validate with and the scenario schema shows.

Imports only the standard library, numpy and pydantic (:mod:`sfl_sim.kit.params`); never ``channel``,
``sfl_sim`` or ``analysis``.
"""
