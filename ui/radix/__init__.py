"""The Radix page's controls, sidebar and stepped view."""
