"""The Eviction page's cached work and controls."""
