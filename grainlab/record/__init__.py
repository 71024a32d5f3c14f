"""Launching a program under the collector: what the program is linked
against (program)."""
