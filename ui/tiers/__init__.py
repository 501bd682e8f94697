"""The Tiers page's cached work, plan and router sections."""
