"""Sub-commands of the mqconform CLI (see mqconform.cli.COMMANDS)."""
