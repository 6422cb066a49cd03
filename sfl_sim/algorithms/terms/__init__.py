"""Pure loss terms and state updates of the methods, free of any simulation."""
