"""The Prefix-cache page's controls and views."""
