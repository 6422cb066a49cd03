"""Split-learning methods: the round skeleton, its messages, server modes, and each method."""
