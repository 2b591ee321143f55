"""The ``bayescpt`` command line, the top layer: it parses arguments, calls the library, prints,
writes files and sets exit codes. It holds no statistics: every number it prints comes from a
library call.
"""
