"""The Strata page's views."""
