"""Pure helpers over evidence that rules share: roles, frame origins, what a thread waits on."""
