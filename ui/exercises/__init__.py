"""The lectures' exercises: the list page and the panel beside a live view."""
