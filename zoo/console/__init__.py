"""What the commands share at the terminal: markdown tables (`markdown`), progress on stderr (`progress`), and
Ctrl-C / SIGTERM handling with their exit statuses (`signals`), and an exit without the last garbage collections
(`exit`)."""
