"""How an algorithm's steps execute (private machinery): stacked (vmap) or looped, working copies,
FLOP metering, compression applied on the paths.
"""
