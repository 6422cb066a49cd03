"""The link: small-scale fading, rate models (Shannon, MCS tables, BLER), HARQ, outage, power
control, interference and the sharing of the band; :mod:`~sfl_sim.channel.link.budget` puts them
together into the per-round link budget.
"""
