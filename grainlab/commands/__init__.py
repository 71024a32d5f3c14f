"""grainlab subcommands, one module each.

A command module defines:
  add_parser(subparsers)   register its argparse sub-parser and call
                           `parser.set_defaults(run=run)`
  run(args) -> int         do the work; raise GrainlabError for bad input
`grainlab.cli` discovers the modules of this package: nothing to register.
"""
