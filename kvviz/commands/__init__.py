"""One module per CLI subcommand (see ``kvviz.cli``)."""
