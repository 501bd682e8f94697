"""The kit every page shares: frame, links, keys, presenter mode, errors, tables, traces, uploads, long work."""
