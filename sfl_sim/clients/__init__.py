"""The clients: who is selected, who is online when (availability, traces), what they spend (energy)."""
