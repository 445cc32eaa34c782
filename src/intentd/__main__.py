from intentd.cli import main

raise SystemExit(main())
