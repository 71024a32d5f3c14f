"""The app's views, one module each: its pane (`pane(data)`) and its
callbacks (`register(app, data, figures)`, one call). The panes sit side by
side in the page; the view state (grainlab.app.state) says which one shows."""
from . import compare, graph, locality, locations, parallelism, ranks, scaling, summary, threads

# pane order in the page (ids pane-<name>); compare only with a reference run
PANES = {"summary": summary, "graph": graph, "locations": locations, "parallelism": parallelism,
         "threads": threads, "locality": locality, "scaling": scaling, "compare": compare,
         "ranks": ranks}
