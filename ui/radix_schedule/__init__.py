"""The RadixAttention scheduling page's queue."""
