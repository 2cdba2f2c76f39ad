"""One module per `vera` command group; vera_cli.main imports each when its command runs."""
