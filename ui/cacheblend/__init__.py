"""The CacheBlend page's cached work and views."""
