"""Readers that turn other formats (e.g. the Kasahara STG task graphs) into Instances."""
