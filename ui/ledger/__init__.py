"""The Ledger page's inputs and views."""
