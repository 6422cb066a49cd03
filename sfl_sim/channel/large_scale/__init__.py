"""Large-scale radio: where clients are, how they move, path loss and shadowing."""
