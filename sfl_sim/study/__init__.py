"""Studies: a scenario x seeds x a grid, planned into runs and executed (in process, pool or Ray)."""
