"""``fastslow view``: the trajectory viewer over run directories, served on a loopback port (paper §5,
App. D/E: the mechanism logs read episode by episode). ``data`` reads the runs, ``server`` answers the
page's requests; the page itself is ``eval.viewer``'s, shared with ``fastslow report``'s static page."""
