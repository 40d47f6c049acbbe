try:
    value = compute()
except ValueError:
    value = None

try:
    value = compute()
except (ValueError, TypeError) as err:
    report(err)
except KeyError:
    pass
except:
    raise
else:
    use(value)
finally:
    cleanup()

try:
    risky()
finally:
    cleanup()

try:
    import fast_path
except ImportError:
    fast_path = None

try:
    nested()
except Exception as outer:
    try:
        recover(outer)
    except Exception:
        raise RuntimeError("recovery failed") from outer
