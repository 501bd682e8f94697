"""The Mooncake cluster page's controls and views."""
