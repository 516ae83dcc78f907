"""Helpers the tests share: where inputs live, MPI tools, recording, synthetic traces."""
