"""results/: the saved documents (profile, diagnosis, fleet, protocol results) with their
to/from dict and schema checks, the vocabulary they are written in (modes, rungs) and one
format registry. Lowest of the result code: nothing here measures or renders."""
