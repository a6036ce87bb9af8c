"""Pure statistics for comparing models: no ORM, no Django, plain lists and dicts in and out."""
