"""Federated-learning methods: FedAvg's round and the baselines built on it."""
