"""Domain rules with no ORM and no HTTP: scoring math, perturbations, episode outcomes."""
