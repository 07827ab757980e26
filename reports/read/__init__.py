"""Reading histories: run directories (JSON Lines) into normalised rows and the Parquet history store."""
