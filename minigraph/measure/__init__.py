"""measure/: what every measurement shares: the clock and repeat loops, statistics, counters
around an op (rusage, /proc), contention from other processes, the environment, interruption.
"""
