"""CacheBlend on the record-world model: the numpy model, its world and training, the blend, its report and
figures."""
