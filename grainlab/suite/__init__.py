"""Comparing programs: one row of properties per trace (characterization) and
the example suite recorded and characterized (runner)."""
