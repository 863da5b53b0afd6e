from kq.cli import main

raise SystemExit(main())
