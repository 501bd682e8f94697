"""The Trace page's reuse measures."""
