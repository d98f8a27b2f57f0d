"""What people see: the HTML page, written from the store alone, and its templates."""
