"""Tables built from a trace's events: one row per task (tasks), per loop and
loop chunk (loops), and the identity forest that names them (identity)."""
