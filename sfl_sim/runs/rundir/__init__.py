"""The run directory: its schema (file names, columns), reading and writing its files, and the
upgrade of older directories on read.
"""
