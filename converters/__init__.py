"""Readers and writers of foreign trace formats, all producing minitrace TraceColumns."""
