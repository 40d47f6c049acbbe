from nki.language import
import nki
