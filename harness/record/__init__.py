"""Record: the run directory, its run record and its JUnit XML."""
