from cellar.cli import main

raise SystemExit(main())
