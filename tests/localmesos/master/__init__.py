"""localmesos/master/ tested: offers and allocation, framework lifecycle, validation, status updates, teams, agent loss, the web UI."""
