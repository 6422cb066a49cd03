"""Large-scale radio: where clients are, how they move, path loss and shadowing.

:class:`~sfl_sim.channel.large_scale.model.LargeScale` composes a cell's placement, path loss,
shadowing and mobility into one object; the 3GPP scenarios' constants are data in
:mod:`~sfl_sim.channel.large_scale.tables`.
"""
