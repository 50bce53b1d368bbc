"""Stand-ins for the two boundaries this machine cannot reach: an OpenAI-compatible server
and the public web (pages and a SearXNG-style search endpoint). Both speak real HTTP on
127.0.0.1; everything between them runs for real."""
