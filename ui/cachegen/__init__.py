"""The CacheGen page's cached work, controls and views."""
