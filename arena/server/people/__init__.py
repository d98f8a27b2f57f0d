"""Who is in the class and what each may see: members, access, password hashing and the sign-in throttle."""
