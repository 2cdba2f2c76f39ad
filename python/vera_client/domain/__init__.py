"""Pure domain code: values, errors and ports. Imports no infrastructure library."""
